class StepperTextConfig:
    attribute_map = {"num_mtp_layers": "num_nextn_predict_layers"}
