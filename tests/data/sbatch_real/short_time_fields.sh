#!/bin/sh
# Shape of a job with one-digit minutes and seconds in its time and a per-node GPU count.
#SBATCH --nodes=1
#SBATCH --ntasks-per-node=12
#SBATCH --job-name=data1
#SBATCH --output=%x-%j.out
#SBATCH --error=%x-%j.out
#SBATCH --gpus-per-node=1
#SBATCH --mem=64G
#SBATCH --time=11:0:0
python data.py
