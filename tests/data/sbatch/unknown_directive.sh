#!/bin/bash
#SBATCH --job-name=legacy
#SBATCH --qoss=high
#SBATCH --gres=gpu:1
#SBATCH --gpu=2 -X
#SBATCH --mem=lots
#ROTA image=busybox:1.36

echo never submitted
