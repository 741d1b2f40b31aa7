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

# one torchrun per node; rota sets MASTER_ADDR, MASTER_PORT and NODE_RANK for gang jobs
torchrun \
  --nnodes "$SLURM_NNODES" \
  --nproc-per-node 8 \
  --node-rank "$SLURM_NODEID" \
  --master-addr "$MASTER_ADDR" \
  --master-port "$MASTER_PORT" \
  pretrain.py --config configs/llama8b.yaml
