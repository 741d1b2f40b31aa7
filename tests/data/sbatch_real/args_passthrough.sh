#!/bin/bash
# Shape of a wrapper whose arguments go to the program ("$@"); two spaces after #SBATCH.
#SBATCH  --output=logs/%j.out
#SBATCH  --gres=gpu:1
#SBATCH  --mem=50G
python -u train.py "$@"
