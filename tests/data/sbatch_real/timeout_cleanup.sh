#!/bin/bash -l
# Shape of a documentation example: a cleanup function on USR1 before the time limit.
# job name
#SBATCH --job-name=example
# the account
#SBATCH --account=lab
#SBATCH --ntasks=1
#SBATCH --time=0-00:04:00
#SBATCH --signal=B:USR1@120
cleanup() { echo "cleanup at $(date)"; }
trap cleanup USR1
sleep 1000 &
wait
