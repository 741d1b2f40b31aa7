#!/bin/bash
# SLURM's default unit is MB (MiB): 16000 is 16000Mi
#SBATCH --job-name=preprocess
#SBATCH --cpus-per-task=16
#SBATCH --mem=16000
#SBATCH --time=90
#ROTA image=python:3.12-slim

python preprocess.py --workers 16
