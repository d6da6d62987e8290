"""What ``vulture bertflow_mini tests --min-confidence 60`` calls unused but a caller it cannot see
uses. vulture reads this file with the others (it lies in ``tests/``); nothing imports or runs it,
and pytest does not collect it (no ``test_`` prefix). Each line says who the caller is.

vulture cannot see the chapters either: a package function used only by a notebook is reported.
Before removing one, search ``book/*.ipynb`` (and ``benchmarks/``) for its name.
"""

_ = object()

_.forward  # torch: nn.Module.__call__ runs every flow layer's forward (bertflow_mini/postprocess/flow.py)
_._private_cache  # pytest: autouse fixture (tests/conftest.py)
_._no_network  # pytest: autouse fixture (tests/data/)
_._restore_global_state  # pytest: autouse / usefixtures fixture
_.one_torch_thread  # pytest: requested by name for its effect (usefixtures, or an unused argument)
_.tiny_corpus  # pytest: requested by name for its effect (tests/encoders/test_pretrain.py)
_.pytestmark  # pytest: module-level marks
_.binary_location  # selenium: ChromeOptions attribute, read by the driver (tests/test_book.py)
_.data_dep_init_done  # normflows: attribute its ActNorm reads, set by tests comparing with it
_.inv_perm  # normflows: attribute its Permute reads, set by tests comparing with it
_.closure  # torch: Optimizer.step(closure) is the signature torch calls (flow.BertAdamW.step)
_.fake_run  # pytest: requested by name for its effect (tests/chapters/test_strength.py)
_.setup  # Sphinx: calls an extension's setup(app) (tools/bookbuild/launch_button.py, _config.yml)
_.log_message  # http.server: BaseHTTPRequestHandler calls it for each request (tests/colab_mirror.py)
_.mtime  # tarfile: TarInfo fields tar.add writes (tools/bookbuild/publish.py)
_.uid  # tarfile: TarInfo field
_.gid  # tarfile: TarInfo field
_.uname  # tarfile: TarInfo field
_.gname  # tarfile: TarInfo field
