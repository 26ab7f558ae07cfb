"""`python finetune/run_multiple_choice.py ...` = the `run_multiple_choice` console script."""
from official_rtd.tools import run_multiple_choice

if __name__ == "__main__":
  run_multiple_choice.run()
