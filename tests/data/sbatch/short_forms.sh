#!/bin/sh
#SBATCH -Jtiny -t 30 -N1 -c2
#SBATCH -A lab -a 1,3,5 -d afterany:7 -q low
#SBATCH -G 1   # one GPU in all
#ROTA image=busybox:1.36

echo "task $SLURM_ARRAY_TASK_ID"
