"""official_rtd: pre-training text encoders as discriminators (ELECTRA and family)."""
import setuptools

setuptools.setup(
    name="official_rtd",
    version="0.1.0",
    description=("TensorFlow 2 / Model Garden library for replaced-token-detection pre-training "
                 "(ELECTRA, Electric, TEAMS, SCRIPT, ALE, AMOS) and fine-tuning on GLUE, SQuAD, "
                 "tagging and RACE."),
    long_description=open("README.md", encoding="utf-8").read(),
    long_description_content_type="text/markdown",
    python_requires=">=3.10",
    # Only the library is installed: `data_prep/`, `finetune/`, `gin/` stay in the source tree so no
    # generically named top-level package shadows another project's.
    packages=setuptools.find_packages(include=["official_rtd", "official_rtd.*"]),
    install_requires=[
        "tensorflow==2.20.*",
        "tf-models-official==2.20.*",
        "tensorflow-text==2.20.*",
        "tensorflow-datasets",
        "gin-config",
        "absl-py",
        "numpy",
        "safetensors",  # export_model --format=huggingface
        "tokenizers",  # build_vocab's default WordPiece learner; tokenizer.json vocabularies
        "sentencepiece",  # build_vocab --model_type=sentencepiece_*; .model vocabularies
        "matplotlib",  # compare_runs --plot
        "blingfire",  # create_pretraining_data --packing=sentences (sentence splitter)
        "sacremoses",  # run_cvt --tasks=translate: Moses tokenization of raw text
        "sacrebleu",  # run_cvt --tasks=translate: BLEU
    ],
    # apache-beam: create_pretraining_data --runner=DirectRunner|DataflowRunner|...; 2.77 is the
    # newest that installs next to TensorFlow 2.20 here (it pins protobuf < 7).
    # transformers' TF ELECTRA classes check the Hugging Face export (no PyTorch needed).
    extras_require={
        "beam": ["apache-beam==2.77.*"],
        # train_word_vectors: word2vec vectors for run_cvt --word_embeddings.
        "vectors": ["gensim"],
        # benchmarks/train_throughput.py's PyTorch configurations (never a test dependency).
        # torch's install upgrades setuptools past 80, which drops pkg_resources, which Model
        # Garden imports: keep it below.
        "benchmark": ["torch", "transformers>=4.45,<4.50", "setuptools<81"],
        # importlib_resources: TFDS needs it (via etils.epath) to build the test's own dataset.
        # pytest-xdist: pytest.ini runs test classes on all cores (up to 4 processes).
        # isort: tests/test_imports_sorted.py keeps every file's imports in `.isort.cfg`'s order.
        "test": ["pytest", "pytest-xdist", "scipy", "scikit-learn", "transformers>=4.45,<4.50",
                 "apache-beam==2.77.*", "importlib_resources", "gensim", "isort>=5,<10"],
    },
    entry_points={
        "console_scripts": [
            "build_vocab=official_rtd.tools.build_vocab:run",
            "create_pretraining_data=official_rtd.tools.create_pretraining_data:run",
            "run_pretraining=official_rtd.tools.run_pretraining:run",
            "rtd_quickstart=official_rtd.tools.quickstart:run",
            "run_glue=official_rtd.tools.run_glue:run",
            "run_squad=official_rtd.tools.run_squad:run",
            "run_tagging=official_rtd.tools.run_tagging:run",
            "run_multiple_choice=official_rtd.tools.run_multiple_choice:run",
            "run_cvt=official_rtd.tools.run_cvt:run",
            "cvt_translate=official_rtd.tools.cvt_translate:run",
            "cvt_predict=official_rtd.tools.cvt_predict:run",
            "train_word_vectors=official_rtd.tools.train_word_vectors:run",
            "export_model=official_rtd.tools.export_model:run",
            "import_checkpoint=official_rtd.tools.import_checkpoint:run",
            "compare_runs=official_rtd.tools.compare_runs:run",
            "score_pll=official_rtd.tools.score_pll:run",
            "score_pairs=official_rtd.tools.score_pairs:run",
            "run_probes=official_rtd.tools.run_probes:run",
            "run_parsing=official_rtd.tools.run_parsing:run",
        ],
    },
)
