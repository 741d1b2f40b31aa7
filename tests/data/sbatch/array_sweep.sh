#!/bin/bash
#SBATCH -J lr-sweep
#SBATCH --array=0-19%4
#SBATCH --gres=gpu:1
#SBATCH -t 4:00:00
#SBATCH --mem=24G
#SBATCH -o logs/%x_%A_%a.out
#SBATCH -e logs/%x_%A_%a.err
#ROTA image=ghcr.io/lab/sweeps:2024.10

LRS=(1e-2 3e-3 1e-3 3e-4 1e-4)
LR=${LRS[$((SLURM_ARRAY_TASK_ID % 5))]}
SEED=$((SLURM_ARRAY_TASK_ID / 5))
python sweep.py --lr "$LR" --seed "$SEED" --out "results/${SLURM_ARRAY_JOB_ID}_${SLURM_ARRAY_TASK_ID}"
