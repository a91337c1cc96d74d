//! ENAS's LSTM controller (Pham et al. 2018, as Katib's `Controller.py` builds it): per layer an
//! operation chosen from the LSTM output, then, past the first layer, one skip decision per
//! earlier layer from an attention over their outputs. Forward pass, exact gradient of the
//! REINFORCE loss, and Adam.
//!
//! Hand-written rather than a tensor crate: the network is a few hundred lines of small
//! matrix-vector products over one sequence, the gradient is checked against finite
//! differences in the tests, and it stays pure, synchronous and dependency-free like every
//! algorithm (the Rust tensor crates bring threads, BLAS or GPU runtimes for no gain here).

use rand::{Rng, RngExt};

/// The controller's shape and the sampling settings Katib applies to every logit.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Shape {
    pub layers: usize,
    pub operations: usize,
    pub hidden: usize,
    /// `controller_temperature` (`None`: not applied).
    pub temperature: Option<f64>,
    /// `controller_tanh_const` (`None`: not applied).
    pub tanh_const: Option<f64>,
    /// `controller_skip_target`.
    pub skip_target: f64,
}

/// One architecture: per layer its operation and, for layer `l`, `l` skip bits.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Arch {
    pub ops: Vec<usize>,
    pub skips: Vec<Vec<bool>>,
}

/// All trainable weights in one vector (so Adam runs over one slice), with named views.
#[derive(Debug, Clone, PartialEq)]
pub struct Params {
    shape: Shape,
    pub data: Vec<f64>,
}

/// Offsets of each weight inside `Params::data`.
#[derive(Debug, Clone, Copy)]
struct Layout {
    lstm: usize,
    g_emb: usize,
    emb: usize,
    soft: usize,
    attn1: usize,
    attn2: usize,
    attn_v: usize,
    len: usize,
}

impl Shape {
    fn layout(&self) -> Layout {
        let (h, k) = (self.hidden, self.operations);
        let lstm = 0;
        let g_emb = lstm + 2 * h * 4 * h;
        let emb = g_emb + h;
        let soft = emb + k * h;
        let attn1 = soft + h * k;
        let attn2 = attn1 + h * h;
        let attn_v = attn2 + h * h;
        Layout {
            lstm,
            g_emb,
            emb,
            soft,
            attn1,
            attn2,
            attn_v,
            len: attn_v + h,
        }
    }

    /// Katib's logit transform: divide by the temperature, then `tanh_const * tanh`.
    fn squash(&self, x: f64) -> (f64, f64) {
        let (mut y, mut dy) = (x, 1.0);
        if let Some(t) = self.temperature {
            y /= t;
            dy /= t;
        }
        if let Some(c) = self.tanh_const {
            let th = y.tanh();
            dy *= c * (1.0 - th * th);
            y = c * th;
        }
        (y, dy)
    }
}

impl Params {
    /// Katib's initialiser: every weight uniform in [-0.01, 0.01].
    pub fn init(shape: Shape, rng: &mut impl Rng) -> Self {
        let len = shape.layout().len;
        let data = (0..len)
            .map(|_| rng.random::<f64>() * 0.02 - 0.01)
            .collect();
        Params { shape, data }
    }

    pub fn shape(&self) -> Shape {
        self.shape
    }
}

/// Where an LSTM step's input came from, for routing its gradient.
#[derive(Debug, Clone)]
enum Source {
    Start,
    Embedding(usize),
    /// The mean of the chosen earlier layers' outputs (one skip bit per earlier layer).
    Skips(Vec<bool>),
}

#[derive(Debug, Clone)]
struct LstmStep {
    z: Vec<f64>,
    c_prev: Vec<f64>,
    c: Vec<f64>,
    gates: Vec<f64>,
    tanh_c: Vec<f64>,
    h: Vec<f64>,
    source: Source,
}

#[derive(Debug, Clone)]
struct Decision {
    /// Pre-squash logits' squash derivatives and the softmax probabilities.
    dsquash: Vec<f64>,
    probs: Vec<f64>,
    chosen: usize,
}

#[derive(Debug, Clone)]
struct SkipAttention {
    u: Vec<Vec<f64>>,
    decisions: Vec<Decision>,
}

/// Everything the backward pass needs from one forward pass.
#[derive(Debug, Clone)]
pub struct Tape {
    steps: Vec<LstmStep>,
    op_decisions: Vec<Decision>,
    skip_attention: Vec<SkipAttention>,
    hw: Vec<Vec<f64>>,
    /// `-log p` of the architecture.
    pub neg_log_prob: f64,
    /// Katib's entropy term: `sum(-log p * p)` over every decision.
    pub entropy: f64,
    /// Katib's skip penalty: mean over layers of `sum sigmoid(y) * ln(sigmoid(y) / target)`.
    pub skip_penalty: f64,
    pub arch: Arch,
}

/// How a forward pass picks each decision.
#[derive(Debug)]
pub enum Choose<'a, R: Rng> {
    Sample(&'a mut R),
    Forced(&'a Arch),
}

impl Tape {
    /// A tape with nothing recorded yet, room made for a pass over `layers` layers.
    fn empty(layers: usize) -> Self {
        Tape {
            steps: Vec::with_capacity(2 * layers),
            op_decisions: Vec::new(),
            skip_attention: Vec::new(),
            hw: Vec::new(),
            neg_log_prob: 0.0,
            entropy: 0.0,
            skip_penalty: 0.0,
            arch: Arch {
                ops: Vec::new(),
                skips: Vec::new(),
            },
        }
    }

    /// Adds a decision's `-log p` and its entropy term to the totals.
    fn tally(&mut self, d: &Decision) {
        let nll = -d.probs[d.chosen].ln();
        self.neg_log_prob += nll;
        self.entropy += nll * d.probs[d.chosen];
    }
}

/// The output of the last taped LSTM step (empty before the first, which no caller asks for).
fn last_h(tape: &Tape) -> &[f64] {
    tape.steps.last().map_or(&[], |st| &st.h)
}

fn sigmoid(x: f64) -> f64 {
    1.0 / (1.0 + (-x).exp())
}

fn softmax(y: &[f64]) -> Vec<f64> {
    let m = y.iter().cloned().fold(f64::NEG_INFINITY, f64::max);
    let e: Vec<f64> = y.iter().map(|v| (v - m).exp()).collect();
    let s: f64 = e.iter().sum();
    e.into_iter().map(|v| v / s).collect()
}

/// `x` (len `rows`) times the row-major `rows x cols` matrix at `w`.
fn vec_mat(x: &[f64], w: &[f64], cols: usize) -> Vec<f64> {
    let mut out = vec![0.0; cols];
    for (r, xr) in x.iter().enumerate() {
        let row = &w[r * cols..(r + 1) * cols];
        for (o, wv) in out.iter_mut().zip(row) {
            *o += xr * wv;
        }
    }
    out
}

/// Gradient of `x · W` : adds `x ⊗ d` into `dw` and returns `W d`.
fn vec_mat_back(x: &[f64], w: &[f64], dw: &mut [f64], d: &[f64]) -> Vec<f64> {
    let cols = d.len();
    let mut dx = vec![0.0; x.len()];
    for (r, xr) in x.iter().enumerate() {
        let row = &w[r * cols..(r + 1) * cols];
        let drow = &mut dw[r * cols..(r + 1) * cols];
        let mut acc = 0.0;
        for k in 0..cols {
            drow[k] += xr * d[k];
            acc += row[k] * d[k];
        }
        dx[r] = acc;
    }
    dx
}

fn add_into(dst: &mut [f64], src: &[f64]) {
    for (d, s) in dst.iter_mut().zip(src) {
        *d += s;
    }
}

impl Params {
    fn lstm(&self, x: Vec<f64>, c_prev: &[f64], h_prev: &[f64], source: Source) -> LstmStep {
        let (h, lay) = (self.shape.hidden, self.shape.layout());
        let mut z = x;
        z.extend_from_slice(h_prev);
        let a = vec_mat(&z, &self.data[lay.lstm..lay.g_emb], 4 * h);
        let mut gates = vec![0.0; 4 * h];
        for k in 0..4 * h {
            gates[k] = if k < 3 * h {
                sigmoid(a[k])
            } else {
                a[k].tanh()
            };
        }
        let mut c = vec![0.0; h];
        let mut tanh_c = vec![0.0; h];
        let mut hh = vec![0.0; h];
        for j in 0..h {
            let (i, f, o, g) = (gates[j], gates[h + j], gates[2 * h + j], gates[3 * h + j]);
            c[j] = i * g + f * c_prev[j];
            tanh_c[j] = c[j].tanh();
            hh[j] = o * tanh_c[j];
        }
        LstmStep {
            z,
            c_prev: c_prev.to_vec(),
            c,
            gates,
            tanh_c,
            h: hh,
            source,
        }
    }

    fn decide<R: Rng>(
        &self,
        logits: &[f64],
        choose: &mut Choose<'_, R>,
        forced: usize,
    ) -> Decision {
        let (y, dsquash): (Vec<f64>, Vec<f64>) =
            logits.iter().map(|&x| self.shape.squash(x)).unzip();
        let probs = softmax(&y);
        let chosen = match choose {
            Choose::Forced(_) => forced,
            Choose::Sample(rng) => {
                let u: f64 = rng.random();
                let mut acc = 0.0;
                probs
                    .iter()
                    .position(|p| {
                        acc += p;
                        u < acc
                    })
                    .unwrap_or(probs.len() - 1)
            }
        };
        Decision {
            dsquash,
            probs,
            chosen,
        }
    }

    /// Runs the controller once, sampling or replaying an architecture.
    pub fn forward<R: Rng>(&self, mut choose: Choose<'_, R>) -> Tape {
        let s = self.shape;
        let (h, lay) = (s.hidden, s.layout());
        let g_emb = self.data[lay.g_emb..lay.emb].to_vec();
        let mut tape = Tape::empty(s.layers);
        let mut input = (g_emb.clone(), Source::Start);
        for l in 0..s.layers {
            let op = self.choose_op(l, input, &mut choose, &mut tape);
            let x = self.data[lay.emb + op * h..lay.emb + (op + 1) * h].to_vec();
            self.push_step(x, Source::Embedding(op), &mut tape);
            let bits = if l > 0 {
                let bits = self.choose_skips(l, &mut choose, &mut tape);
                input = (self.skip_input(&bits, &tape), Source::Skips(bits.clone()));
                bits
            } else {
                input = (g_emb.clone(), Source::Start);
                Vec::new()
            };
            tape.arch.skips.push(bits);
            let hw = vec_mat(last_h(&tape), &self.data[lay.attn1..lay.attn2], h);
            tape.hw.push(hw);
        }
        if s.layers > 1 {
            tape.skip_penalty /= (s.layers - 1) as f64;
        }
        tape
    }

    /// One LSTM step on `x`, continuing from the last taped step (from zeros at the start).
    fn push_step(&self, x: Vec<f64>, source: Source, tape: &mut Tape) {
        let zeros = vec![0.0; self.shape.hidden];
        let (c, hh) = tape
            .steps
            .last()
            .map_or((&zeros, &zeros), |st| (&st.c, &st.h));
        let step = self.lstm(x, c, hh, source);
        tape.steps.push(step);
    }

    /// Layer `l`'s operation: an LSTM step on `input`, then a decision over the operations'
    /// logits from its output.
    fn choose_op<R: Rng>(
        &self,
        l: usize,
        input: (Vec<f64>, Source),
        choose: &mut Choose<'_, R>,
        tape: &mut Tape,
    ) -> usize {
        let lay = self.shape.layout();
        self.push_step(input.0, input.1, tape);
        let k = self.shape.operations;
        let logits = vec_mat(last_h(tape), &self.data[lay.soft..lay.attn1], k);
        let forced = match &*choose {
            Choose::Forced(a) => a.ops[l],
            Choose::Sample(_) => 0,
        };
        let d = self.decide(&logits, choose, forced);
        tape.tally(&d);
        let op = d.chosen;
        tape.arch.ops.push(op);
        tape.op_decisions.push(d);
        op
    }

    /// Layer `l`'s skip bits: one decision per earlier layer, from an attention of the last
    /// step's output over theirs; adds the decisions' KL to the skip target to the penalty.
    fn choose_skips<R: Rng>(
        &self,
        l: usize,
        choose: &mut Choose<'_, R>,
        tape: &mut Tape,
    ) -> Vec<bool> {
        let (h, lay) = (self.shape.hidden, self.shape.layout());
        let targets = [1.0 - self.shape.skip_target, self.shape.skip_target];
        let q = vec_mat(last_h(tape), &self.data[lay.attn2..lay.attn_v], h);
        let v = &self.data[lay.attn_v..lay.len];
        let mut att = SkipAttention {
            u: Vec::with_capacity(l),
            decisions: Vec::with_capacity(l),
        };
        let mut bits = Vec::with_capacity(l);
        let mut kl = 0.0;
        for j in 0..l {
            let u: Vec<f64> = (0..h).map(|i| (q[i] + tape.hw[j][i]).tanh()).collect();
            let sj: f64 = u.iter().zip(v).map(|(a, b)| a * b).sum();
            let forced = match &*choose {
                Choose::Forced(a) => usize::from(a.skips[l][j]),
                Choose::Sample(_) => 0,
            };
            let d = self.decide(&[-sj, sj], choose, forced);
            tape.tally(&d);
            for (m, t) in targets.iter().enumerate() {
                let y = self.shape.squash([-sj, sj][m]).0;
                let p = sigmoid(y);
                kl += p * (p / t).ln();
            }
            bits.push(d.chosen == 1);
            att.u.push(u);
            att.decisions.push(d);
        }
        tape.skip_penalty += kl;
        tape.skip_attention.push(att);
        bits
    }

    /// The input after skip decisions, as Katib computes it: the chosen earlier layers'
    /// outputs summed and divided by one more than their count.
    fn skip_input(&self, bits: &[bool], tape: &Tape) -> Vec<f64> {
        let n = bits.iter().filter(|b| **b).count() as f64;
        let mut x = vec![0.0; self.shape.hidden];
        for (j, _) in bits.iter().enumerate().filter(|(_, b)| **b) {
            add_into(&mut x, &tape.steps[2 * j + 1].h);
        }
        x.iter_mut().for_each(|v| *v /= 1.0 + n);
        x
    }

    /// Gradient of `coef_log_prob * neg_log_prob + coef_skip * skip_penalty` for the taped pass.
    pub fn backward(&self, tape: &Tape, coef_log_prob: f64, coef_skip: f64) -> Vec<f64> {
        let s = self.shape;
        let (h, lay) = (s.hidden, s.layout());
        let mut grad = vec![0.0; lay.len];
        // Gradients reaching each step's output from later layers' skip attention and inputs.
        let mut extra = vec![vec![0.0; h]; tape.steps.len()];
        // `(dh, dc)` flowing back along the LSTM chain into the step before.
        let mut chain = (vec![0.0; h], vec![0.0; h]);
        let kl_coef = if s.layers > 1 {
            coef_skip / (s.layers - 1) as f64
        } else {
            0.0
        };
        for l in (0..s.layers).rev() {
            let s2 = 2 * l + 1;
            let mut dh = extra[s2].clone();
            add_into(&mut dh, &chain.0);
            if l > 0 {
                let coefs = (coef_log_prob, kl_coef);
                let back = self.skips_back(l, tape, coefs, &mut grad, &mut extra);
                add_into(&mut dh, &back);
            }
            chain = self.step_back(&tape.steps[s2], &dh, &chain.1, &mut grad, &mut extra);

            let s1 = 2 * l;
            let d = &tape.op_decisions[l];
            let mut dh = self.op_back(d, &tape.steps[s1], coef_log_prob, &mut grad);
            add_into(&mut dh, &chain.0);
            add_into(&mut dh, &extra[s1]);
            chain = self.step_back(&tape.steps[s1], &dh, &chain.1, &mut grad, &mut extra);
        }
        grad
    }

    /// Layer `l`'s skip decisions backwards: the attention weights' gradients go into `grad`,
    /// the earlier layers' outputs' into `extra`; returns the gradient of this layer's output.
    fn skips_back(
        &self,
        l: usize,
        tape: &Tape,
        coefs: (f64, f64),
        grad: &mut [f64],
        extra: &mut [Vec<f64>],
    ) -> Vec<f64> {
        let (h, lay) = (self.shape.hidden, self.shape.layout());
        let att = &tape.skip_attention[l - 1];
        let v = self.data[lay.attn_v..lay.len].to_vec();
        let mut dq = vec![0.0; h];
        for j in 0..l {
            let ds = self.skip_score_back(&att.decisions[j], &att.u[j], &v, coefs);
            let u = &att.u[j];
            let mut dhw = vec![0.0; h];
            for i in 0..h {
                grad[lay.attn_v + i] += ds * u[i];
                let dpre = ds * v[i] * (1.0 - u[i] * u[i]);
                dq[i] += dpre;
                dhw[i] = dpre;
            }
            let hj = &tape.steps[2 * j + 1].h;
            let back = vec_mat_back(
                hj,
                &self.data[lay.attn1..lay.attn2],
                &mut grad[lay.attn1..lay.attn2],
                &dhw,
            );
            add_into(&mut extra[2 * j + 1], &back);
        }
        vec_mat_back(
            &tape.steps[2 * l + 1].h,
            &self.data[lay.attn2..lay.attn_v],
            &mut grad[lay.attn2..lay.attn_v],
            &dq,
        )
    }

    /// Gradient of the loss in one skip decision's score `s` (its logits are `[-s, s]`), from
    /// the log-probability (weighted `coefs.0`) and the KL to the skip target (`coefs.1`).
    fn skip_score_back(&self, d: &Decision, u: &[f64], v: &[f64], coefs: (f64, f64)) -> f64 {
        let s = self.shape;
        let (coef_log_prob, kl_coef) = coefs;
        let targets = [1.0 - s.skip_target, s.skip_target];
        let mut dlogit = [0.0; 2];
        for m in 0..2 {
            let onehot = if m == d.chosen { 1.0 } else { 0.0 };
            let mut dy = coef_log_prob * (d.probs[m] - onehot);
            // y = squash(logit); the KL term is taken on sigmoid(y).
            let sj: f64 = u.iter().zip(v).map(|(a, b)| a * b).sum();
            let y = s.squash([-sj, sj][m]).0;
            let p = sigmoid(y);
            dy += kl_coef * p * (1.0 - p) * ((p / targets[m]).ln() + 1.0);
            dlogit[m] = dy * d.dsquash[m];
        }
        dlogit[1] - dlogit[0]
    }

    /// A layer's operation decision backwards: its softmax weights' gradient goes into `grad`;
    /// returns the gradient of the output of `step`, whose output it read.
    fn op_back(
        &self,
        d: &Decision,
        step: &LstmStep,
        coef_log_prob: f64,
        grad: &mut [f64],
    ) -> Vec<f64> {
        let lay = self.shape.layout();
        let dlogits: Vec<f64> = (0..self.shape.operations)
            .map(|m| {
                let onehot = if m == d.chosen { 1.0 } else { 0.0 };
                coef_log_prob * (d.probs[m] - onehot) * d.dsquash[m]
            })
            .collect();
        vec_mat_back(
            &step.h,
            &self.data[lay.soft..lay.attn1],
            &mut grad[lay.soft..lay.attn1],
            &dlogits,
        )
    }

    /// One taped LSTM step backwards, its input's gradient sent where the input came from;
    /// returns the gradients of `h_prev` and `c_prev` for the step before.
    fn step_back(
        &self,
        st: &LstmStep,
        dh: &[f64],
        dc_next: &[f64],
        grad: &mut [f64],
        extra: &mut [Vec<f64>],
    ) -> (Vec<f64>, Vec<f64>) {
        let (dx, dh_prev, dc_prev) = self.lstm_back(st, dh, dc_next, grad);
        self.route(&st.source, &dx, grad, extra);
        (dh_prev, dc_prev)
    }

    /// Sends an LSTM input's gradient to where the input came from.
    fn route(&self, source: &Source, dx: &[f64], grad: &mut [f64], extra: &mut [Vec<f64>]) {
        let (h, lay) = (self.shape.hidden, self.shape.layout());
        match source {
            Source::Start => add_into(&mut grad[lay.g_emb..lay.emb], dx),
            Source::Embedding(op) => {
                add_into(&mut grad[lay.emb + op * h..lay.emb + (op + 1) * h], dx)
            }
            Source::Skips(bits) => {
                let n = bits.iter().filter(|b| **b).count() as f64;
                for (j, _) in bits.iter().enumerate().filter(|(_, b)| **b) {
                    for (e, d) in extra[2 * j + 1].iter_mut().zip(dx) {
                        *e += d / (1.0 + n);
                    }
                }
            }
        }
    }

    /// One LSTM step backwards: returns the gradients of its input, `h_prev` and `c_prev`.
    fn lstm_back(
        &self,
        st: &LstmStep,
        dh: &[f64],
        dc_next: &[f64],
        grad: &mut [f64],
    ) -> (Vec<f64>, Vec<f64>, Vec<f64>) {
        let (h, lay) = (self.shape.hidden, self.shape.layout());
        let mut da = vec![0.0; 4 * h];
        let mut dc_prev = vec![0.0; h];
        for j in 0..h {
            let (i, f, o, g) = (
                st.gates[j],
                st.gates[h + j],
                st.gates[2 * h + j],
                st.gates[3 * h + j],
            );
            let tc = st.tanh_c[j];
            let dc = dc_next[j] + dh[j] * o * (1.0 - tc * tc);
            da[j] = dc * g * i * (1.0 - i);
            da[h + j] = dc * st.c_prev[j] * f * (1.0 - f);
            da[2 * h + j] = dh[j] * tc * o * (1.0 - o);
            da[3 * h + j] = dc * i * (1.0 - g * g);
            dc_prev[j] = dc * f;
        }
        let dz = vec_mat_back(
            &st.z,
            &self.data[lay.lstm..lay.g_emb],
            &mut grad[lay.lstm..lay.g_emb],
            &da,
        );
        (dz[..h].to_vec(), dz[h..].to_vec(), dc_prev)
    }
}

/// TensorFlow's Adam (β1 0.9, β2 0.999, ε 1e-8, bias-corrected step size).
#[derive(Debug, Clone, PartialEq)]
pub struct Adam {
    m: Vec<f64>,
    v: Vec<f64>,
    t: i32,
    lr: f64,
}

impl Adam {
    pub fn new(len: usize, lr: f64) -> Self {
        Adam {
            m: vec![0.0; len],
            v: vec![0.0; len],
            t: 0,
            lr,
        }
    }

    pub fn step(&mut self, params: &mut [f64], grad: &[f64]) {
        const B1: f64 = 0.9;
        const B2: f64 = 0.999;
        self.t += 1;
        let lr_t = self.lr * (1.0 - B2.powi(self.t)).sqrt() / (1.0 - B1.powi(self.t));
        for i in 0..params.len() {
            self.m[i] = B1 * self.m[i] + (1.0 - B1) * grad[i];
            self.v[i] = B2 * self.v[i] + (1.0 - B2) * grad[i] * grad[i];
            params[i] -= lr_t * self.m[i] / (self.v[i].sqrt() + 1e-8);
        }
    }
}
