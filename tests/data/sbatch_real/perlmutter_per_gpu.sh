#!/bin/bash
# Shape of a preemptible NERSC-style job: one task per GPU, a licence, a signal and requeue.
#SBATCH -A m0001_g
#SBATCH -C gpu
#SBATCH -q preempt
#SBATCH -N 1
#SBATCH -J sig_interrupt
#SBATCH -L SCRATCH
#SBATCH --time=10:00:00
#SBATCH --gpus-per-node=4
#SBATCH --ntasks-per-gpu=1
#SBATCH --cpus-per-task=8
#SBATCH -o %j.out
#SBATCH -e %j.err
#SBATCH --signal=USR1@60
#SBATCH --requeue
#SBATCH --open-mode=append
echo "jobstart $(date)"; pwd
srun python test_signal_interrupt.py
