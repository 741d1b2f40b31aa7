#!/bin/bash
# Ported from an HPC center: many directives rota accepts without carrying them out. Each gets
# one warning line naming its line; gsub --strict refuses the script listing all of them.
#SBATCH --job-name=md-sim
#SBATCH --partition=gpu-long --qos=normal
#SBATCH --nodes=1 --ntasks=4 --ntasks-per-node=4
#SBATCH --gpus-per-node=4
#SBATCH --mem=0
#SBATCH --exclusive
#SBATCH -w gpu01
#SBATCH --exclude=gpu07
#SBATCH --signal=B:USR1@120
#SBATCH --open-mode=append
#SBATCH --comment="ticket 4411"
#SBATCH --time-min=1:00:00
#SBATCH --time=2-00:00:00
#SBATCH --nice=100
#SBATCH --deadline=2026-12-01T00:00:00
#SBATCH -L matlab:1
#SBATCH --hint=nomultithread
#SBATCH --no-requeue
#ROTA image=ghcr.io/lab/gromacs:2024.3

srun gmx mdrun -deffnm md
