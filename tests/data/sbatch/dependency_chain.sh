#!/bin/sh
# evaluate once both training runs succeeded and the data job ended either way
#SBATCH --job-name eval
#SBATCH --dependency afterok:101:102,afterany:103
#SBATCH --gres gpu:a100:2
#SBATCH --time 45
#SBATCH --account vision
#ROTA image=ghcr.io/lab/eval:1.4

python evaluate.py --checkpoints runs/101 runs/102
