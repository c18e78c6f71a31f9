"""PyTorch's own FSDP1 / FSDP2 as shardbench's peer engines (peers/README.md): `python -m
torch_fsdp.peer` runs one rank of a scenario (harness/peer_launch.cc starts it with peers/ on
PYTHONPATH), `python -m torch_fsdp.dcp_convert` converts SHARDED checkpoints (`shardbench
convert-checkpoint`)."""
