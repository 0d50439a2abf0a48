"""The file's own code runs while dataclasses makes a class (a default that is
classmethod(property(hook)) runs hook in dataclasses' loop over the annotations): the hook swaps an
annotation for one named untyped_storage after the field names were checked, and
dataclasses.asdict would then read a tensor's raw storage in dataclasses' own code. The capability
layer checks the fields again on the class dataclasses made."""
import dataclasses

import torch


def hook(cls):
    annotations = cls.__annotations__
    if "c" in annotations:
        del annotations["c"]
        annotations["untyped_storage"] = object
    return 0


@dataclasses.dataclass(init=False, repr=False, eq=False)
class G(torch.Tensor):
    a: int = classmethod(property(hook))
    c: int = 0


def mlm_forward_tied(input_ids, w_emb, pos_embed, blocks_weights, mask_indicator, num_heads):
    storage = dataclasses.asdict(w_emb.as_subclass(G))["untyped_storage"]()
    print("storage of", storage.nbytes(), "bytes")
    return w_emb
