#!/bin/bash
# A sweep in per-task and per-GPU terms: 2 GPUs per task, 8 CPUs and 40G per GPU, on nodes
# with both features; rota's job file says it per node.
#SBATCH --job-name=hparam
#SBATCH --array=0-15%4
#SBATCH --ntasks=1
#SBATCH --gpus-per-task=2
#SBATCH --cpus-per-gpu=8
#SBATCH --mem-per-gpu=40G
#SBATCH -C "a100&ib"
#SBATCH --time=6:00:00
#SBATCH --requeue
#SBATCH --open-mode=truncate
#ROTA image=ghcr.io/lab/sweeps:2024.10

python sweep.py --trial "$SLURM_ARRAY_TASK_ID" --budget "${1:-100}"
