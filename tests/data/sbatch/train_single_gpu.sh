#!/bin/bash
# A single-GPU fine-tune as a university cluster's docs show it: a partition, mail, memory
# per CPU. rota maps -p and mails END and FAIL (when its admin set a relay), and turns
# 8 CPUs x 6G into 48Gi.
#SBATCH -p gpu
#SBATCH --job-name=bert-finetune
#SBATCH --gres=gpu:a100:1
#SBATCH --cpus-per-task=8
#SBATCH --mem-per-cpu=6G
#SBATCH --time=0-12:00:00
#SBATCH --mail-type=END,FAIL
#SBATCH --mail-user=ann@lab.example.org
#SBATCH -o slurm-%x-%j.out
#ROTA image=nvcr.io/nvidia/pytorch:24.10-py3

python finetune.py --model bert-base --epochs 3
