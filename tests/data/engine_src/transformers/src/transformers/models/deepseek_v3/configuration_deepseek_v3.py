class DeepseekV3Config:
    attribute_map = {
        "num_local_experts": "n_routed_experts",
        "num_mtp_layers": "num_nextn_predict_layers",
    }
    num_mtp_layers: int = 1
