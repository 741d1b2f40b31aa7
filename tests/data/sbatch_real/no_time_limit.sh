#! /bin/bash
# Shape of an old cluster's job: no time limit, the old --tasks-per-node spelling, -x nodes.
#SBATCH --partition=gpu
#SBATCH --time=0
#SBATCH --gres=gpu:1
#SBATCH --nodes=1
#SBATCH --tasks-per-node=1
#SBATCH --exclude={n1}
#SBATCH --array=1-4
#SBATCH -e results/%J_%a.err
#SBATCH -o results/%J_%a.out
python train.py -j=$1_$SLURM_ARRAY_TASK_ID
