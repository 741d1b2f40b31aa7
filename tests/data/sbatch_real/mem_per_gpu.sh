#!/bin/bash
# Shape of a single-node job sized by memory per GPU, in a partition named after the GPU size.
#SBATCH --job-name=docu
#SBATCH --output=run.out
#SBATCH --partition=80g
#SBATCH --gres=gpu:4
#SBATCH --mem-per-gpu=8G
echo "nodes $SLURM_JOB_NODELIST ($SLURM_JOB_NUM_NODES), tasks per node $SLURM_NTASKS_PER_NODE"
srun python -m lightning_multi
