#!/bin/bash
# Shape of a "variable time" job: a minimum time, the wanted time in the comment, a USR1 trap
# that requeues the job itself.
#SBATCH -J vtj
#SBATCH -q regular
#SBATCH -C haswell
#SBATCH -N 2
#SBATCH --time=48:00:00
#SBATCH --time-min=2:00:00
#SBATCH --error=vtj-%j.err
#SBATCH --output=vtj-%j.out
#SBATCH --comment=96:00:00
#SBATCH --signal=B:USR1@60
#SBATCH --requeue
#SBATCH --open-mode=append
requeue_me() { scontrol requeue "$SLURM_JOB_ID"; }
trap requeue_me USR1
srun -n2 -c1 --cpu_bind=cores ./a.out &
wait
