#!/bin/bash
#SBATCH --job-name=llama-8b-pretrain
#SBATCH --nodes=2
#SBATCH --ntasks-per-node=1
#SBATCH --gpus-per-node=8
#SBATCH --cpus-per-task=96
#SBATCH --mem=1000G
#SBATCH --time=3-00:00:00
#SBATCH --exclusive
#SBATCH --account=nlp
#SBATCH --qos=high
#SBATCH --output=%x-%j.out
#ROTA image=nvcr.io/nvidia/pytorch:24.10-py3
#ROTA shm_size=64GiB

# the script runs once, on the first node; srun starts one torchrun per node
export MASTER_ADDR=$(scontrol show hostnames "$SLURM_JOB_NODELIST" | head -n 1)
export MASTER_PORT=29500
srun torchrun \
  --nnodes "$SLURM_NNODES" \
  --nproc-per-node 8 \
  --rdzv-id "$SLURM_JOB_ID" \
  --rdzv-backend c10d \
  --rdzv-endpoint "$MASTER_ADDR:$MASTER_PORT" \
  pretrain.py --config configs/llama8b.yaml
