"""Imports every module that registers gin configurables (and, for methods, a registry name), so
gin files can name them. A new pre-training method adds its module here: one line."""
# pylint: disable=unused-import
from official_rtd.methods import amos
from official_rtd.methods import electra
from official_rtd.methods import electra_adversarial
from official_rtd.methods import electra_tt
from official_rtd.methods import electric
from official_rtd.methods import mlm
from official_rtd.methods import noise_generator
from official_rtd.methods import registry
from official_rtd.methods import replace_mlm
from official_rtd.methods import script
from official_rtd.methods import teams
from official_rtd.modeling import encoder_config
from official_rtd.training import evaluation
from official_rtd.training import optimization
from official_rtd.training import structure_monitor
from official_rtd.training import train_config
