#!/bin/bash
#SBATCH --job-name=imagenet-eval
#SBATCH --gres=gpu:1
#SBATCH --mem=64G
#SBATCH --time=01:30:00
#SBATCH --no-requeue
#ROTA image=pytorch/pytorch:2.5.1-cuda12.4-cudnn9-runtime pull=always
#ROTA mount=/data/imagenet:/data:ro mount=/scratch/lab:/scratch
#ROTA gpu_memory=40GiB preemptible=true priority=10
#ROTA env=OMP_NUM_THREADS=8

python eval.py --data /data --out /scratch
