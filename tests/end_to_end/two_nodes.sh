#!/usr/bin/env bash
# Two "nodes" on one machine: Linux network namespaces joined by a veth pair, each with an
# address that exists only inside it, 2 ranks per node over Gloo. The smoke suite through
#   (a) our own launcher (--nnodes 2 --node-rank K),
#   (b) torchrun (--nnodes 2 --rdzv-backend c10d, the project's .venv),
#   (c) srun's variables (SLURM_PROCID, SLURM_NTASKS, SLURM_LOCALID, SLURM_NODEID),
# gives the same losses and exact metrics (bytes, counts, communication bytes) as 1 node x 4
# ranks. Then node 1 is killed mid-run: node 0 ends within the timeout + 10 s, exit 3, naming
# the lost ranks. Needs root (ip netns); the namespaces are removed at the end, also on failure.
#   tests/end_to_end/two_nodes.sh SHARDBENCH PYTHON SOURCE_DIR OUT_DIR
set -euo pipefail
bin=$1 python=$2 src=$3 out=$4
rm -rf "$out" && mkdir -p "$out"
source "$src/scripts/netns-nodes.sh"
if ! netns_nodes_possible; then
  echo "SKIP: needs root and iproute2 (ip netns)"; exit 77
fi
tag=$$
netns_nodes_up $tag
short=(train.steps=3 train.warmup_steps=1)
same() { "$python" "$src/tests/end_to_end/same_exact.py" "$out/one_node" "$1" || { tail -20 "$1".log* 2>/dev/null; exit 1; }; }
all_ok() { local p; for p in "$@"; do wait "$p" || return 1; done; }

# 1 node x 4 ranks: the reference.
"$bin" run smoke --nproc 4 --quiet --out "$out/one_node" "${short[@]}" >"$out/one_node.log" 2>&1

# (a) our launcher, one per node.
pids=()
for i in 0 1; do
  on $i "$bin" run smoke --nnodes 2 --node-rank $i --nproc-per-node 2 --master-addr "${addr[0]}" --master-port 29731 \
    --quiet --out "$out/ours" "${short[@]}" >"$out/ours.log$i" 2>&1 & pids+=($!)
done
all_ok "${pids[@]}" || { cat "$out"/ours.log*; echo "FAIL: --nnodes 2 launch"; exit 1; }
same "$out/ours"
echo "--nnodes 2 (our launcher): losses and exact metrics equal to 1 node x 4 ranks"
# What `plan` predicts each rank sends per step equals what the 4 ranks across the two nodes counted.
"$python" "$src/tests/end_to_end/comm_plan_check.py" "$bin" "$src" "$out/plan" "$out/ours"

# (b) torchrun with c10d rendezvous; --local-addr: the namespace's own address, which the
# shared hostname would not give; is_host: which agent serves the rendezvous store (torchrun
# guesses it from the hostname, the same in both namespaces).
pids=()
for i in 0 1; do
  on $i "$python" -m torch.distributed.run --no-python --nnodes 2 --nproc-per-node 2 --rdzv-backend c10d \
    --rdzv-endpoint "${addr[0]}:29732" --rdzv-id sb$tag --rdzv-conf is_host=$((1 - i)) --local-addr "${addr[$i]}" \
    "$bin" run smoke --quiet --out "$out/torchrun" "${short[@]}" >"$out/torchrun.log$i" 2>&1 & pids+=($!)
done
all_ok "${pids[@]}" || { cat "$out"/torchrun.log*; echo "FAIL: torchrun --nnodes 2"; exit 1; }
same "$out/torchrun"
echo "torchrun --nnodes 2 --rdzv-backend c10d: losses and exact metrics equal to 1 node x 4 ranks"

# (c) srun's variables, as an sbatch script's srun would set them.
srun_rank() {  # NODE LOCAL ARGS...
  local node=$1 local_rank=$2; shift 2
  on "$node" env SLURM_PROCID=$((node * 2 + local_rank)) SLURM_NTASKS=4 SLURM_LOCALID=$local_rank SLURM_NODEID=$node \
    MASTER_ADDR="${addr[0]}" MASTER_PORT=29733 "$bin" run "$@"
}
pids=()
for n in 0 1; do for l in 0 1; do
  srun_rank $n $l smoke --quiet --out "$out/srun" "${short[@]}" >"$out/srun.log$n$l" 2>&1 & pids+=($!)
done; done
all_ok "${pids[@]}" || { cat "$out"/srun.log*; echo "FAIL: srun variables"; exit 1; }
same "$out/srun"
echo "srun variables: losses and exact metrics equal to 1 node x 4 ranks"

# (d) Node 1 without the shared filesystem (a tmpfs over the output's parent, in its own mount
# namespace): an instance with a sharded checkpoint is refused up front naming ranks 2 and 3.
mkdir -p "$out/fs"
pids=()
on 0 "$bin" run "$src/scenarios/smoke.yaml" --nnodes 2 --node-rank 0 --nproc-per-node 2 --master-addr "${addr[0]}" \
  --master-port 29735 --quiet --out "$out/fs/run" engine=flat checkpoint.type=sharded checks.state_dict_roundtrip=true \
  "${short[@]}" >"$out/blind.log0" 2>&1 & pids+=($!)
on 1 unshare -m sh -c "mount -t tmpfs none '$out/fs' && exec '$bin' run '$src/scenarios/smoke.yaml' --nnodes 2 --node-rank 1 \
  --nproc-per-node 2 --master-addr ${addr[0]} --master-port 29735 --quiet --out '$out/fs/run' engine=flat \
  checkpoint.type=sharded checks.state_dict_roundtrip=true ${short[*]}" >"$out/blind.log1" 2>&1 & pids+=($!)
rc=0; wait "${pids[0]}" || rc=$?; wait "${pids[1]}" || true
grep -q "rank(s) 2, 3 cannot see rank 0's files" "$out/fs/run/index.json" ||
  { cat "$out"/blind.log*; echo "FAIL: ranks without the shared directory not named (node 0 exit $rc)"; exit 1; }
[ "$rc" = 2 ] || { cat "$out/blind.log0"; echo "FAIL: node 0 exited $rc, expected 2"; exit 1; }
echo "node 1 without the shared filesystem: the checkpoint instance refused naming ranks 2, 3"

# Node 1 killed mid-run (all its processes): node 0 ends within timeout + 10 s, exit 3, naming ranks 2 and 3.
timeout_s=20
pids=()
for i in 0 1; do
  on $i "$bin" run "$src/scenarios/smoke.yaml" --nnodes 2 --node-rank $i --nproc-per-node 2 --master-addr "${addr[0]}" \
    --master-port 29734 --quiet --out "$out/killed" train.steps=100000 timeout_s=$timeout_s >"$out/killed.log$i" 2>&1 & pids+=($!)
done
node0=${pids[0]} node1=${pids[1]}
sleep 10
killed_at=$(date +%s)
ip netns pids "${ns[1]}" | xargs -r kill -9
rc=0
timeout $((timeout_s + 10)) tail --pid="$node0" -f /dev/null || { echo "FAIL: node 0 still running $((timeout_s + 10)) s after node 1 was killed"; cat "$out"/killed.log0; kill -9 "$node0"; exit 1; }
wait "$node0" || rc=$?
took=$(( $(date +%s) - killed_at ))
wait "$node1" 2>/dev/null || true
[ "$rc" = 3 ] || { cat "$out/killed.log0"; echo "FAIL: node 0 exited $rc, expected 3"; exit 1; }
grep -q "rank(s) 2, 3 of 4 lost" "$out/killed.log0" || { cat "$out/killed.log0"; echo "FAIL: lost ranks not named"; exit 1; }
echo "node 1 killed: node 0 exited 3 after ${took} s naming ranks 2, 3 (timeout ${timeout_s} s)"
