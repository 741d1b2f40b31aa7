#!/bin/bash
# Shape of a post-processing job waiting on a job id written alone.
#SBATCH --job-name="post"
#SBATCH --nodes=1
#SBATCH --ntasks=1
#SBATCH --gpus-per-task=1
#SBATCH --cpus-per-task=2
#SBATCH --partition=multi
#SBATCH --time=2-00:00:00
##SBATCH --nodelist=ivb09
#SBATCH --dependency={dep}
/bin/bash -c "./post_run.sh"
