#!/bin/sh
#SBATCH --job-name=args-e2e
#SBATCH --partition=default
#SBATCH --time=5:00
#ROTA image=rota-test-busybox:latest

echo "$# args: $1 and $2 as $SLURM_JOB_NAME"
