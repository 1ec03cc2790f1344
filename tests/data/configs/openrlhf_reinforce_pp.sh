#!/bin/bash
# REINFORCE++ with OpenRLHF on Ray, after a short SFT warm-up of the base model.
set -euo pipefail

SAVE_DIR=./checkpoint/llama3-8b-rpp
PRETRAIN=./checkpoint/llama3-8b-sft

cat > "$SAVE_DIR.notes" <<'NOTES'
--actor_learning_rate 1e-3 here is prose in a note, not an argument
NOTES

deepspeed --num_gpus 8 --module openrlhf.cli.train_sft \
   --max_len 2048 --dataset Open-Orca/OpenOrca --input_key question --output_key response \
   --train_batch_size 256 --micro_train_batch_size 2 --pretrain meta-llama/Meta-Llama-3-8B \
   --save_path "$PRETRAIN" --zero_stage 2 --max_epochs 1 --bf16 --learning_rate=5e-6

RPP_ARGS=(
   --pretrain "$PRETRAIN"
   --remote_rm_url http://localhost:5000/get_reward   # reward server started separately
   --save_path "$SAVE_DIR"
   --advantage_estimator reinforce
   --n_samples_per_prompt 4
   --actor.adam.lr 5e-7
   --init_kl_coef 1e-4
   --rollout.max_new_tokens 1024
   --use_kl_loss
   --kl_estimator k2
)
RPP_ARGS+=(--temperature 1.0 --top_p 0.95)

ray job submit --address="http://127.0.0.1:8265" \
   --runtime-env-json='{"working_dir": "/openrlhf"}' \
   -- python3 -m openrlhf.cli.train_ppo_ray \
   --ref_num_nodes 1 --ref_num_gpus_per_node 2 \
   "${RPP_ARGS[@]}" \
   --max_samples 100000 2>&1 | tee "$SAVE_DIR/train.log"
