"""Imports every module that registers gin configurables, so gin files can name them."""
# pylint: disable=unused-import
from official_rtd.modeling import encoder_config
from official_rtd.modeling.models import amos
from official_rtd.modeling.models import electra
from official_rtd.modeling.models import electra_adversarial
from official_rtd.modeling.models import electra_tt
from official_rtd.modeling.models import electric
from official_rtd.modeling.models import mlm
from official_rtd.modeling.models import noise_generator
from official_rtd.modeling.models import replace_mlm
from official_rtd.modeling.models import script
from official_rtd.modeling.models import teams
from official_rtd.training import optimization
from official_rtd.training import trainer
from official_rtd.training import evaluation
