# tests/gpu holds a manual GPU check script (check_runner_gpu.py) and the tiny-model builder it
# shares with tests/lmeval/test_runner_hf.py. Nothing here is a pytest test module.
collect_ignore_glob = ["*.py"]
