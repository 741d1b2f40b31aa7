#!/bin/bash
# Shape of a job asking GPUs for the whole job (--gpus) with one task.
#SBATCH --mem=60G
#SBATCH --ntasks=1
#SBATCH --cpus-per-task=8
#SBATCH --partition=gpucloud
#SBATCH --gpus=2
module purge
srun python train.py
