"""`python finetune/run_tagging.py ...` = the `run_tagging` console script."""
from official_rtd.tools import run_tagging

if __name__ == "__main__":
  run_tagging.run()
