"""bookbuild — the BERT-flow book's build tooling, kept out of the package readers install.

``execute``, ``output_check``  running a chapter; comparing a fresh output with the committed one
``editions``       the Colab and student editions of every chapter (``make editions``), each built
                   by ``colab_edition``, whose text ``myst_markdown`` turns from MyST into Markdown
``launch_button``  the HTML book's Colab button (a Sphinx extension), which opens those editions
``teaching``       the instructor's page: words of prose, exercises and self-checks, student links
``publish``        ``make release``: the released weights with their checksums, the editions, the wheel

It imports bertflow_mini; bertflow_mini never imports it (``lint-imports`` checks both).
"""
