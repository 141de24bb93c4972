#include "csrc/kernels/kernels.h"

namespace amp {

DType reduce_output_dtype(ReduceOp op, DType in_dtype) {
  if (op == ReduceOp::ArgMax || op == ReduceOp::ArgMin) return DType::Int64;
  if ((op == ReduceOp::Sum || op == ReduceOp::Mean) &&
      (in_dtype == DType::Int64 || in_dtype == DType::Bool)) {
    return DType::Int64;
  }
  return in_dtype;
}

const char* unary_op_name(UnaryOp op) {
  switch (op) {
    case UnaryOp::Neg:
      return "neg";
    case UnaryOp::Exp:
      return "exp";
    case UnaryOp::Log:
      return "log";
    case UnaryOp::Sqrt:
      return "sqrt";
    case UnaryOp::Rsqrt:
      return "rsqrt";
    case UnaryOp::Abs:
      return "abs";
    case UnaryOp::Sign:
      return "sign";
    case UnaryOp::Tanh:
      return "tanh";
    case UnaryOp::Sigmoid:
      return "sigmoid";
    case UnaryOp::Relu:
      return "relu";
    case UnaryOp::Gelu:
      return "gelu";
    case UnaryOp::GeluTanh:
      return "gelu";
    case UnaryOp::Erf:
      return "erf";
    case UnaryOp::Reciprocal:
      return "reciprocal";
    case UnaryOp::Square:
      return "square";
    case UnaryOp::Pow:
      return "pow";
    case UnaryOp::Clamp:
      return "clamp";
    case UnaryOp::AddScalar:
      return "add";
    case UnaryOp::MulScalar:
      return "mul";
    case UnaryOp::RSubScalar:
      return "sub";
    case UnaryOp::DivScalar:
      return "div";
    case UnaryOp::RDivScalar:
      return "div";
    case UnaryOp::IsFinite:
      return "isfinite";
  }
  return "unary";
}

const char* binary_op_name(BinaryOp op) {
  switch (op) {
    case BinaryOp::Add:
      return "add";
    case BinaryOp::Sub:
      return "sub";
    case BinaryOp::Mul:
      return "mul";
    case BinaryOp::Div:
      return "div";
    case BinaryOp::Maximum:
      return "maximum";
    case BinaryOp::Minimum:
      return "minimum";
    case BinaryOp::Pow:
      return "pow";
    case BinaryOp::Eq:
      return "eq";
    case BinaryOp::Ne:
      return "ne";
    case BinaryOp::Lt:
      return "lt";
    case BinaryOp::Le:
      return "le";
    case BinaryOp::Gt:
      return "gt";
    case BinaryOp::Ge:
      return "ge";
    case BinaryOp::ReluBackward:
      return "relu_backward";
  }
  return "binary";
}

const char* reduce_op_name(ReduceOp op) {
  switch (op) {
    case ReduceOp::Sum:
      return "sum";
    case ReduceOp::Mean:
      return "mean";
    case ReduceOp::Max:
      return "max";
    case ReduceOp::Min:
      return "min";
    case ReduceOp::ArgMax:
      return "argmax";
    case ReduceOp::ArgMin:
      return "argmin";
  }
  return "reduce";
}

}  // namespace amp
