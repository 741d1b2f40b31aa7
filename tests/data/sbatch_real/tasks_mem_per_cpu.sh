#!/bin/bash
# Shape of four tasks on one GPU with memory per CPU.
#SBATCH --ntasks-per-node=4
#SBATCH --cpus-per-task=1
#SBATCH --gpus-per-node=1
#SBATCH --mem-per-cpu=4G
python3 main.py
