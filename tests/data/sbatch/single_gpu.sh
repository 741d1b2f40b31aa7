#!/bin/bash
#SBATCH --job-name=resnet50-finetune
#SBATCH --gres=gpu:1
#SBATCH --time=02:00:00
#SBATCH --cpus-per-task=8
#SBATCH --mem=32G
#SBATCH --output=slurm-%j.out
#ROTA image=pytorch/pytorch:2.5.1-cuda12.4-cudnn9-runtime

set -euo pipefail
echo "running on $(hostname) as job $SLURM_JOB_ID"
python train.py --epochs 10 --batch-size 256
