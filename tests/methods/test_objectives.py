"""The masked-LM warm-up shared by the generator/discriminator family (`objectives.py`): TEAMS,
ELECTRA-TT and AMOS take it from `masked_lm_warmup` bindings; members that cannot compose with it refuse
it, and a method outside the family refuses its bindings."""
import gin
import tensorflow as tf

from official_rtd.methods import amos
from official_rtd.methods import electra_adversarial
from official_rtd.methods import electra_tt
from official_rtd.methods import mlm
from official_rtd.methods import objectives
from official_rtd.methods import replace_mlm
from official_rtd.methods import teams
from tests.methods import test_teams
from tests.methods.test_electra import CONFIG
from tests.methods.test_electra import toy_batch

WARMUP = {"rtd_start_step": 2, "discriminator_mlm_weight": 1.0, "discriminator_mlm_steps": 4,
          "masked_warmup": True}


def bind_warmup():
  for name, value in WARMUP.items():
    gin.bind_parameter(f"masked_lm_warmup.{name}", value)


class FamilyWarmupTest(tf.test.TestCase):

  def tearDown(self):
    gin.clear_config()
    super().tearDown()

  MEMBERS = (  # (name, builder, its objective after the warm-up from its loss terms)
      ("teams", lambda: teams.build_teams_pretrainer(test_teams.CONFIG, vocab=test_teams.VOCAB),
       lambda l: l["mlm_loss"] + 5.0 * l["rtd_loss"] + 2.0 * l["mws_loss"]),   # TEAMS eq. 9
      ("electra_tt", lambda: electra_tt.build_electra_tt_pretrainer(CONFIG, generator_size=0.5),
       lambda l: l["cloze_loss"] + 50.0 * l["rtd_loss"]),
      ("amos", lambda: amos.build_amos_pretrainer(CONFIG, mlm_layers=(1, 2)),
       lambda l: l["generator_loss"] + 50.0 * l["rtd_loss"]))                  # AMOS eq. 2 + λ L_RTD

  def test_teams_electra_tt_and_amos_learn_as_a_masked_lm_first(self):
    for name, build, objective in self.MEMBERS:
      bind_warmup()
      model = build()
      self.assertEqual((model.rtd_start_step, model.discriminator_mlm_steps,
                        model.discriminator_mlm_weight, model.masked_warmup), (2, 4, 1.0, True))
      self.assertEqual(model.detection_start_step(), 2, name)
      step = tf.Variable(0, dtype=tf.int64)
      model.bind_step(lambda step=step: step)
      seen, embedded = [], []
      real_call = model.discriminator.call

      def spy(inputs, *args, real_call=real_call, seen=seen, embedded=embedded, **kwargs):
        seen.append(inputs["input_word_ids"].numpy().copy())
        embedded.append(inputs.get("input_word_embeddings"))
        return real_call(inputs, *args, **kwargs)

      model.discriminator.call = spy
      batch = toy_batch()
      totals = {}
      for value in (0, 2, 4):
        step.assign(value)
        outputs = model(batch, training=False)
        losses = {k: float(v.value) for k, v in model.compute_losses(batch, outputs).items()}
        totals[value] = losses
      # Step 0: the discriminator reads the masked input; only the masked LMs count (μ_0 = 1).
      self.assertAllEqual(seen[0], batch["input_word_ids"])
      if embedded[0] is not None:  # AMOS hands over embeddings: the masked input's own, no sample
        self.assertAllClose(embedded[0], tf.gather(model.discriminator.get_embedding_table(),
                                                   batch["input_word_ids"]))
        self.assertNotAllClose(embedded[1], embedded[0])
      generator = totals[0][{"electra_tt": "cloze_loss", "amos": "generator_loss"}.get(
          name, "mlm_loss")]
      self.assertAllClose(totals[0]["total_loss"],
                          generator + totals[0]["discriminator_mlm_loss"], rtol=1e-5, msg=name)
      # Step 2: detection starts on the corrupted input, μ_2 = 1 − 2/4.
      self.assertNotAllEqual(seen[1], batch["input_word_ids"])
      self.assertAllClose(totals[2]["total_loss"],
                          objective(totals[2]) + 0.5 * totals[2]["discriminator_mlm_loss"],
                          rtol=1e-5, msg=name)
      # Step 4: μ = 0, the head no longer runs: the member's own objective alone.
      self.assertAllClose(totals[4]["total_loss"], objective(totals[4]), rtol=1e-5, msg=name)
      self.assertEqual(model.flops_change_steps(), (4,))
      self.assertGreater(model.train_flops_per_example_at(3, 8, 3),
                         model.train_flops_per_example_at(4, 8, 3))
      self.assertEqual(model.train_flops_per_example_at(4, 8, 3),
                       model.train_flops_per_example(8, 3))
      metrics = model.build_metrics()
      self.assertIn("discriminator_mlm_accuracy", metrics, name)
      gin.clear_config()

  def test_members_that_cannot_compose_refuse_it(self):
    for name, build in (
        ("electra_adversarial",
         lambda: electra_adversarial.build_adversarial_electra_pretrainer(CONFIG)),
        ("replace_mlm", lambda: replace_mlm.build_replace_mlm_pretrainer(CONFIG))):
      bind_warmup()
      with self.assertRaisesRegex(ValueError, rf"{name} does not take the masked-LM warm-up "
                                              r"\(masked_lm_warmup.rtd_start_step"):
        build()
      gin.clear_config()
      build()  # without the bindings it builds

  def test_a_method_outside_the_family_refuses_the_bindings(self):
    model = mlm.build_mlm_pretrainer(CONFIG)
    objectives.check_warmup_taken(model)  # nothing bound: nothing to refuse
    bind_warmup()
    with self.assertRaisesRegex(ValueError, r"masked_lm_warmup \(rtd_start_step = 2, "
                                            r"discriminator_mlm_weight = 1.0, .*\) applies to "
                                            r"generator/discriminator methods, not mlm"):
      objectives.check_warmup_taken(model)


if __name__ == "__main__":
  tf.test.main()
