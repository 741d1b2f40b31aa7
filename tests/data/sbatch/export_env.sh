#!/bin/bash
#SBATCH --job-name=wandb-run
#SBATCH --gres=gpu:2
#SBATCH --time=12:00:00
#SBATCH --export=ALL,WANDB_MODE=offline,HF_HOME=/data/hf,PROJECT
#ROTA image=ghcr.io/lab/train:latest
#ROTA mount=/data/hf:/data/hf:ro

python train.py --project "$PROJECT"
