#!/bin/bash
# Shape of an accelerate multi-node example: -D . and O-/E- files named after the job.
#SBATCH --job-name=multinode
#SBATCH -D .
#SBATCH --output=O-%x.%j
#SBATCH --error=E-%x.%j
#SBATCH --nodes=2
#SBATCH --ntasks-per-node=1
#SBATCH --gres=gpu:4
#SBATCH --cpus-per-task=16
#SBATCH --time=01:59:00
head_node_ip=$(scontrol show hostnames $SLURM_JOB_NODELIST | head -n 1)
srun accelerate launch --num_processes $((SLURM_NNODES * 4)) --num_machines $SLURM_NNODES \
  --main_process_ip $head_node_ip --main_process_port 29500 train.py
