#!/usr/bin/env python3
#SBATCH --job-name=py-batch
#SBATCH --gres=gpu:1
#SBATCH --time=20:00
#ROTA image=python:3.12-slim
"""A batch script in Python: its #SBATCH comments are directives all the same."""
import os

print("job", os.environ.get("ROTA_JOB_ID"))
