"""`python finetune/run_squad.py ...` = the `run_squad` console script."""
from official_rtd.tools import run_squad

if __name__ == "__main__":
  run_squad.run()
