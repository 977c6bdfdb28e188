//! Inception-v3 as torchvision builds it (without the auxiliary classifier or the input
//! transform): a five-convolution stem, then inception modules A ×3, B, C ×4, D, E ×2
//! with factorised 1×7/7×1 and 1×3/3×1 convolutions. Every convolution is a
//! `BasicConv2d` (bias-free, batch norm eps 0.001, ReLU). Default input 299×299.

use crate::ZooEntry;
use cnnbench_graph::ops::{AvgPool2d, Conv2d, MaxPool2d};
use cnnbench_graph::{Graph, GraphBuilder, GraphError, Pad2d, T};

const CITATION: &str = "Szegedy, Vanhoucke, Ioffe, Shlens, Wojna. Rethinking the Inception \
                        Architecture for Computer Vision. CVPR 2016";

/// torchvision's `BasicConv2d`: `{name}.conv`, `{name}.bn` (eps 0.001), `{name}.relu`.
fn basic(b: &mut GraphBuilder, name: &str, x: &T, conv: Conv2d) -> T {
    let y = b.conv(format!("{name}.conv"), x, conv.bias(false));
    let y = b.batch_norm_with(format!("{name}.bn"), &y, 1e-3, 0.1);
    b.relu(format!("{name}.relu"), &y)
}

/// A k×k convolution to `out` channels, padded to keep the size.
fn same(out: usize, k: usize) -> Conv2d {
    Conv2d::new(out, k).padding(k / 2)
}
/// The factorised 1×k convolution, padded to keep the size.
fn row(out: usize, k: usize) -> Conv2d {
    Conv2d::new(out, [1, k]).padding(Pad2d::hw(0, k / 2))
}
/// The factorised k×1 convolution, padded to keep the size.
fn col(out: usize, k: usize) -> Conv2d {
    Conv2d::new(out, [k, 1]).padding(Pad2d::hw(k / 2, 0))
}

/// 3×3 average pool, stride 1, padding 1 (counting the padding, as PyTorch does).
fn avg_pool_same(b: &mut GraphBuilder, name: String, x: &T) -> T {
    let mut pool = AvgPool2d::new(3, 1);
    pool.padding = Pad2d::same(1);
    b.avg_pool(name, x, pool)
}

/// A chain of BasicConv2d layers named `{m}.{names[i]}`.
fn chain(b: &mut GraphBuilder, m: &str, x: &T, layers: &[(&str, Conv2d)]) -> T {
    let mut y = x.clone();
    for (name, conv) in layers {
        y = basic(b, &format!("{m}.{name}"), &y, conv.clone());
    }
    y
}

/// `InceptionA`: 1×1 | 1×1→5×5 | 1×1→3×3→3×3 | avg pool→1×1 (`pool_features`).
fn inception_a(b: &mut GraphBuilder, m: &str, x: &T, pool_features: usize) -> T {
    let b1 = chain(b, m, x, &[("branch1x1", same(64, 1))]);
    let b5 = chain(
        b,
        m,
        x,
        &[("branch5x5_1", same(48, 1)), ("branch5x5_2", same(64, 5))],
    );
    let b3 = chain(
        b,
        m,
        x,
        &[
            ("branch3x3dbl_1", same(64, 1)),
            ("branch3x3dbl_2", same(96, 3)),
            ("branch3x3dbl_3", same(96, 3)),
        ],
    );
    let p = avg_pool_same(b, format!("{m}.branch_pool_avg"), x);
    let bp = chain(b, m, &p, &[("branch_pool", same(pool_features, 1))]);
    b.concat(format!("{m}.cat"), &[&b1, &b5, &b3, &bp])
}

/// `InceptionB` (grid reduction to 17×17): 3×3/2 | 1×1→3×3→3×3/2 | max pool 3×3/2.
fn inception_b(b: &mut GraphBuilder, m: &str, x: &T) -> T {
    let b3 = chain(b, m, x, &[("branch3x3", Conv2d::new(384, 3).stride(2))]);
    let bd = chain(
        b,
        m,
        x,
        &[
            ("branch3x3dbl_1", same(64, 1)),
            ("branch3x3dbl_2", same(96, 3)),
            ("branch3x3dbl_3", Conv2d::new(96, 3).stride(2)),
        ],
    );
    let bp = b.max_pool(format!("{m}.branch_pool"), x, MaxPool2d::new(3, 2));
    b.concat(format!("{m}.cat"), &[&b3, &bd, &bp])
}

/// `InceptionC` (17×17): 1×1 | 1×1→1×7→7×1 | 1×1→7×1→1×7→7×1→1×7 | avg pool→1×1,
/// with `c7` channels inside the 7×7 factorisations.
fn inception_c(b: &mut GraphBuilder, m: &str, x: &T, c7: usize) -> T {
    let b1 = chain(b, m, x, &[("branch1x1", same(192, 1))]);
    let b7 = chain(
        b,
        m,
        x,
        &[
            ("branch7x7_1", same(c7, 1)),
            ("branch7x7_2", row(c7, 7)),
            ("branch7x7_3", col(192, 7)),
        ],
    );
    let bd = chain(
        b,
        m,
        x,
        &[
            ("branch7x7dbl_1", same(c7, 1)),
            ("branch7x7dbl_2", col(c7, 7)),
            ("branch7x7dbl_3", row(c7, 7)),
            ("branch7x7dbl_4", col(c7, 7)),
            ("branch7x7dbl_5", row(192, 7)),
        ],
    );
    let p = avg_pool_same(b, format!("{m}.branch_pool_avg"), x);
    let bp = chain(b, m, &p, &[("branch_pool", same(192, 1))]);
    b.concat(format!("{m}.cat"), &[&b1, &b7, &bd, &bp])
}

/// `InceptionD` (grid reduction to 8×8): 1×1→3×3/2 | 1×1→1×7→7×1→3×3/2 | max pool.
fn inception_d(b: &mut GraphBuilder, m: &str, x: &T) -> T {
    let b3 = chain(
        b,
        m,
        x,
        &[
            ("branch3x3_1", same(192, 1)),
            ("branch3x3_2", Conv2d::new(320, 3).stride(2)),
        ],
    );
    let b7 = chain(
        b,
        m,
        x,
        &[
            ("branch7x7x3_1", same(192, 1)),
            ("branch7x7x3_2", row(192, 7)),
            ("branch7x7x3_3", col(192, 7)),
            ("branch7x7x3_4", Conv2d::new(192, 3).stride(2)),
        ],
    );
    let bp = b.max_pool(format!("{m}.branch_pool"), x, MaxPool2d::new(3, 2));
    b.concat(format!("{m}.cat"), &[&b3, &b7, &bp])
}

/// `InceptionE` (8×8): 1×1 | 1×1→(1×3, 3×1) | 1×1→3×3→(1×3, 3×1) | avg pool→1×1.
fn inception_e(b: &mut GraphBuilder, m: &str, x: &T) -> T {
    let b1 = chain(b, m, x, &[("branch1x1", same(320, 1))]);
    let s = chain(b, m, x, &[("branch3x3_1", same(384, 1))]);
    let s_a = chain(b, m, &s, &[("branch3x3_2a", row(384, 3))]);
    let s_b = chain(b, m, &s, &[("branch3x3_2b", col(384, 3))]);
    let b3 = b.concat(format!("{m}.branch3x3_cat"), &[&s_a, &s_b]);
    let d = chain(
        b,
        m,
        x,
        &[
            ("branch3x3dbl_1", same(448, 1)),
            ("branch3x3dbl_2", same(384, 3)),
        ],
    );
    let d_a = chain(b, m, &d, &[("branch3x3dbl_3a", row(384, 3))]);
    let d_b = chain(b, m, &d, &[("branch3x3dbl_3b", col(384, 3))]);
    let bd = b.concat(format!("{m}.branch3x3dbl_cat"), &[&d_a, &d_b]);
    let p = avg_pool_same(b, format!("{m}.branch_pool_avg"), x);
    let bp = chain(b, m, &p, &[("branch_pool", same(192, 1))]);
    b.concat(format!("{m}.cat"), &[&b1, &b3, &bd, &bp])
}

/// The family's models (Inception-v1 is in `inception`).
pub(crate) const MODELS: &[ZooEntry] = &[INCEPTION_V3];

/// Counts: torchvision's, at the 299×299 input it is defined for. Errors: torchvision's
/// (100 − the ImageNet weights' acc@1 and acc@5).
const INCEPTION_V3: ZooEntry = ZooEntry {
    name: "inception-v3",
    aliases: &["inception_v3"],
    family: "inception",
    source: "torchvision inception_v3 (no auxiliary classifier)",
    citation: CITATION,
    top1_error: Some(22.71),
    top5_error: Some(6.55),
    params: 23_834_568,
    macs: 5_713_216_096,
    default_input: [3, 299, 299],
    min_input: 75,
    legacy: false,
    build: inception_v3,
};

/// torchvision `inception_v3` (`aux_logits=False`, `transform_input=False`).
pub fn inception_v3(input: [usize; 3]) -> Result<Graph, GraphError> {
    let mut b = GraphBuilder::new(INCEPTION_V3.name, input).info(INCEPTION_V3.info());
    let x = b.input();
    let x = basic(&mut b, "Conv2d_1a_3x3", &x, Conv2d::new(32, 3).stride(2));
    let x = basic(&mut b, "Conv2d_2a_3x3", &x, Conv2d::new(32, 3));
    let x = basic(&mut b, "Conv2d_2b_3x3", &x, same(64, 3));
    let x = b.max_pool("maxpool1", &x, MaxPool2d::new(3, 2));
    let x = basic(&mut b, "Conv2d_3b_1x1", &x, same(80, 1));
    let x = basic(&mut b, "Conv2d_4a_3x3", &x, Conv2d::new(192, 3));
    let x = b.max_pool("maxpool2", &x, MaxPool2d::new(3, 2));
    let x = inception_a(&mut b, "Mixed_5b", &x, 32);
    let x = inception_a(&mut b, "Mixed_5c", &x, 64);
    let x = inception_a(&mut b, "Mixed_5d", &x, 64);
    let x = inception_b(&mut b, "Mixed_6a", &x);
    let x = inception_c(&mut b, "Mixed_6b", &x, 128);
    let x = inception_c(&mut b, "Mixed_6c", &x, 160);
    let x = inception_c(&mut b, "Mixed_6d", &x, 160);
    let x = inception_c(&mut b, "Mixed_6e", &x, 192);
    let x = inception_d(&mut b, "Mixed_7a", &x);
    let x = inception_e(&mut b, "Mixed_7b", &x);
    let x = inception_e(&mut b, "Mixed_7c", &x);
    let x = b.adaptive_avg_pool("avgpool", &x, 1, 1);
    let x = b.dropout("dropout", &x, 0.5);
    let x = b.flatten("flatten", &x);
    let x = b.linear("fc", &x, 1000);
    b.finish(&x)
}
