#!/bin/bash
# Shape of a Lightning DDP job: two nodes, four tasks each, all of the nodes' memory, minutes.
#SBATCH --account=project_2001659
#SBATCH --partition=gputest
#SBATCH --nodes=2
#SBATCH --ntasks-per-node=4
#SBATCH --cpus-per-task=4
#SBATCH --mem=0
#SBATCH --time=15
#SBATCH --gres=gpu:4
module load pytorch
srun python3 mnist_lightning_ddp.py --gpus=4 --nodes=2
