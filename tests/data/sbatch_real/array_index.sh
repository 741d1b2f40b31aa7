#!/bin/bash
# Shape of a large CPU array indexing a config (GB memory, module and conda lines).
#SBATCH --time=07:30:00
#SBATCH --mem=32GB
#SBATCH --cpus-per-task=8
#SBATCH --array=0-550
echo "Task id is $SLURM_ARRAY_TASK_ID"
module load Anaconda3
source activate env
python train.py --index "$SLURM_ARRAY_TASK_ID"
