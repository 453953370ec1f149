# The launcher of the real executors (`clustertwin launch`) and the reading of
# RANK/WORLD_SIZE/... by each rank: plain POSIX, no torch.
ct_add_library(ct_launch SOURCES core/launcher.cpp core/supervisor.cpp core/dist_env.cpp DEPS ct_common)
