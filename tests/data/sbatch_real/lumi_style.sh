#!/bin/bash -l
# Shape of a LUMI-style job: the user's login environment, whole node, no hyperthreads.
#SBATCH --partition=standard-g
#SBATCH --nodes=1
#SBATCH --ntasks-per-node=4
#SBATCH --gpus-per-node=4
#SBATCH --time=48:00:00
#SBATCH --account=project_462000738
#SBATCH --output=test_%j.out
#SBATCH --error=test_%j.err
#SBATCH --get-user-env
#SBATCH --exclusive
#SBATCH --hint=nomultithread
module purge
export OMP_NUM_THREADS=1
srun -n 4 lmp -in x.in
