#!/bin/bash
# no #ROTA image: the default image applies (ROTA_DEFAULT_IMAGE or default_image in the config)
#SBATCH --job-name=nightly-bench
#SBATCH --gres=gpu:v100:2
#SBATCH --time=1-00
#SBATCH --requeue
#SBATCH --chdir=/workspace/bench
#SBATCH --begin=now+2hours

./run_benchmarks.sh --all
