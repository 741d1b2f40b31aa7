#!/bin/sh
# Shape of a sweep reading its arguments from line N of a file (POSIX sh, days-hours time).
#SBATCH --time=0-3
#SBATCH --array=1-64
#SBATCH --gres=gpu:1
#SBATCH --mem=16G
#SBATCH -c 4
#SBATCH --requeue
args=$(sed -n "${SLURM_ARRAY_TASK_ID}p" configs.txt)
python3 train_eval.py $args
