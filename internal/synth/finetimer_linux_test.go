package synth

// fineTimerClosable: a closed fineTimer's sleep reports an error.
const fineTimerClosable = true
