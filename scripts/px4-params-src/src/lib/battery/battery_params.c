// PX4/PX4-Autopilot battery parameters (stored file id 36048583925, path not named by the index)
PARAM_DEFINE_FLOAT(BAT_LOW_THR, 0.15f);
PARAM_DEFINE_FLOAT(BAT_CRIT_THR, 0.07f);
PARAM_DEFINE_FLOAT(BAT_EMERGEN_THR, 0.05f);
