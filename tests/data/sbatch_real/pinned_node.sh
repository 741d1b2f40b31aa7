#!/usr/bin/env bash
# Shape of a lab server job pinned to one machine with -w, memory per GPU.
#SBATCH --mem-per-gpu=9G
#SBATCH --partition=gpu_batch
#SBATCH --job-name=project
#SBATCH --output=logs/slurm-%j.out
#SBATCH --gres=gpu:4
#SBATCH --nodelist={n2}
#SBATCH --ntasks-per-node=1
#SBATCH --cpus-per-task=16
#SBATCH --time=48:00:00
set -x
sh base_cmd.sh
