//! A safetensors tensor's numbers as `f32`, whatever floating type the
//! file stores: both kinds of model read their weights through it.

use half::{bf16, f16};
use safetensors::Dtype;
use safetensors::tensor::TensorView;

/// The values of `tensor` (named `name` in messages), checked finite; a
/// type other than F32, F16 or BF16 is refused by name.
pub fn values(name: &str, tensor: &TensorView<'_>) -> Result<Vec<f32>, String> {
    let data = tensor.data();
    let values: Vec<f32> = match tensor.dtype() {
        Dtype::F32 => data
            .chunks_exact(4)
            .map(|b| f32::from_le_bytes([b[0], b[1], b[2], b[3]]))
            .collect(),
        Dtype::F16 => data
            .chunks_exact(2)
            .map(|b| f16::from_le_bytes([b[0], b[1]]).to_f32())
            .collect(),
        Dtype::BF16 => data
            .chunks_exact(2)
            .map(|b| bf16::from_le_bytes([b[0], b[1]]).to_f32())
            .collect(),
        other => {
            return Err(format!(
                "tensor {name} is {other:?}; expected F32, F16 or BF16"
            ));
        }
    };
    if values.iter().any(|v| !v.is_finite()) {
        return Err(format!("tensor {name} does not hold finite numbers"));
    }
    Ok(values)
}
