#!/bin/bash
#SBATCH --job-name=iclr-ablation
#SBATCH --reservation=iclr-deadline
#SBATCH --begin=2026-11-23T16:00:00
#SBATCH --hold
#SBATCH --gres=gpu:4
#SBATCH --time=08:00:00
#SBATCH --mem=128G
#ROTA image=ghcr.io/lab/train:iclr

python ablation.py --config configs/ablation_a.yaml
