#!/bin/sh
#SBATCH --job-name=e2e-array
#SBATCH --array=0-1
#SBATCH --gres=gpu:1
#SBATCH --time=5:00
#SBATCH --output=e2e-%A_%a.out
#ROTA image=rota-test-busybox:latest

echo "task $SLURM_ARRAY_TASK_ID of array $SLURM_ARRAY_JOB_ID as $SLURM_JOB_NAME on $SLURM_NNODES node(s)"
[ "$SLURM_ARRAY_TASK_ID" = 1 ] && exit 3
exit 0
