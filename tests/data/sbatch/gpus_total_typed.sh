#!/bin/bash
#SBATCH -J ddp-a100
#SBATCH -N 2
#SBATCH --gpus=a100:8
#SBATCH -c 32
#SBATCH --mem=256g
#SBATCH -t 1-12:00:00
#ROTA image=nvcr.io/nvidia/pytorch:24.10-py3

torchrun --nnodes 2 --nproc-per-node 4 --node-rank "$NODE_RANK" \
  --master-addr "$MASTER_ADDR" --master-port "$MASTER_PORT" train_ddp.py
