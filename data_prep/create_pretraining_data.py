"""`python data_prep/create_pretraining_data.py ...` = the `create_pretraining_data` console
script."""
from official_rtd.tools import create_pretraining_data

if __name__ == "__main__":
  create_pretraining_data.run()
